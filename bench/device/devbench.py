#!/usr/bin/env python3
"""Quiet side-by-side timings on the 16-core benchmark machine
(bench/device/README.md): Cuvil against ONNX Runtime (and PyTorch eager for
torchvision models) on models rebuilt by rebuild.py.

    devbench.py DIR --cuvil BIN [--models a,b] [--precisions fp32,bf16,int8]
        [--threads 1,2] [--rounds 3] [--iters 10] [--lanes 6] [--jobs 14]
        [--torch] [--deadline S] [--json OUT]

Each model is compiled cold (-O2 -t native --no-cache) at every precision,
its fp32 outputs checked against ONNX Runtime's on the same inputs (max abs
error over the output's range; reduced precisions are reported, not judged),
then timed.  Timing runs in lanes: each lane is a process pinned to two
cores of its own and works through its share of the models, the engines
alternating within each round so that whatever disturbs a round disturbs
every engine; each engine keeps its lowest median over the rounds.  Lanes
share the memory system but not cores; --lanes 1 times one model at a time.
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import subprocess
import sys
import time

import numpy as np
import onnx

START = time.time()


def sh(args):
    """Runs cuvil; only it sees the LLVM libraries that travelled (Python's
    own libraries must not resolve against them)."""
    env = dict(os.environ)
    if os.environ.get("CUVIL_LIBS"):
        env["LD_LIBRARY_PATH"] = os.environ["CUVIL_LIBS"]
    return subprocess.run(args, check=True, capture_output=True, text=True, env=env).stdout


def inputs_of(d, name):
    m = onnx.load(os.path.join(d, name + ".full.onnx"), load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    return [(n, os.path.join(d, "%s.in%d.npy" % (name, k))) for k, n in enumerate(names)]


def compile_one(job):
    cuvil, d, name, prec = job
    art = os.path.join(d, "%s.%s" % (name, prec))
    t0 = time.perf_counter()
    try:
        sh([cuvil, "compile", os.path.join(d, name + ".full.onnx"), "-O2", "-t", "native", "-p", prec,
            "-o", art, "--emit", "so", "--no-cache"])
    except subprocess.CalledProcessError as e:
        return (name, prec, None, e.stderr.strip()[-300:])
    return (name, prec, time.perf_counter() - t0, None)


def have_ort():
    try:
        import onnxruntime  # noqa: F401
        return True
    except ImportError:
        return False


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def check_one(job):
    cuvil, d, name, prec = job
    ins = inputs_of(d, name)
    feeds = {n: np.load(f) for n, f in ins}
    if not have_ort():
        return (name, prec, float("nan"), "no onnxruntime here: not checked")
    want = ort_session(os.path.join(d, name + ".full.onnx"), 4).run(None, feeds)
    out = os.path.join(d, "%s.%s.out" % (name, prec))
    args = [cuvil, "run", os.path.join(d, "%s.%s" % (name, prec)), "-o", out, "--json"]
    for n, f in ins:
        args += ["--input", "%s=%s" % (n, f)]
    try:
        got = json.loads(sh(args))["outputs"]
    except (subprocess.CalledProcessError, ValueError) as e:
        return (name, prec, float("inf"), str(e)[-200:])
    worst = 0.0
    for o, w in zip(got, want):
        y = np.load(o["path"]).astype(np.float64)
        w = np.asarray(w, dtype=np.float64)
        if y.shape != w.shape or not np.isfinite(w).all():
            return (name, prec, float("inf"), "shape %s vs %s or non-finite reference" % (y.shape, w.shape))
        worst = max(worst, float(np.abs(y - w).max()) / max(float(w.max() - w.min()), 1e-30))
    return (name, prec, worst, None)


def median_ms(fn, iters):
    for _ in range(3):
        fn()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[len(t) // 2]


def lane(args):
    cores, work, a, q = args
    os.sched_setaffinity(0, cores & os.sched_getaffinity(0) or os.sched_getaffinity(0))
    ort = have_ort()    # imported after the affinity: its threads inherit it
    torch = None
    if a.torch:
        import torch as torch_mod
        import torchvision
        torch = torch_mod
    for name in work:
        ins = inputs_of(a.dir, name)
        feeds = {n: np.load(f) for n, f in ins}
        model = None
        if torch is not None and hasattr(torchvision.models, name):
            kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
            model = getattr(torchvision.models, name)(weights=None, **kw).eval()
            x = torch.from_numpy(feeds[ins[0][0]])
        res = {}
        for th in a.threads:
            sess = ort_session(os.path.join(a.dir, name + ".full.onnx"), th) if ort else None
            best = {}
            for r in range(a.rounds):
                if r and time.time() - START > a.deadline:
                    break
                for prec in a.precisions:
                    art = os.path.join(a.dir, "%s.%s" % (name, prec))
                    if not os.path.isdir(art):
                        continue
                    j = json.loads(sh([a.cuvil, "bench", art, "--threads", str(th), "--iters",
                                       str(a.iters), "--warmup", "3", "--json"]))
                    best[prec] = min(best.get(prec, float("inf")), j["p50_ms"])
                if sess:
                    v = median_ms(lambda: sess.run(None, feeds), a.iters)
                    best["ort"] = min(best.get("ort", float("inf")), v)
                if model is not None:
                    torch.set_num_threads(th)
                    with torch.no_grad():
                        v = median_ms(lambda: model(x), max(3, a.iters // 2))
                    best["torch"] = min(best.get("torch", float("inf")), v)
                best["rounds"] = r + 1
            res[th] = best
        q.put((name, res))
        print("timed %s on cores %s: %s" % (name, cores, json.dumps(res)), file=sys.stderr, flush=True)
    q.put(None)


def ort_version():
    return __import__("onnxruntime").__version__ if have_ort() else "(absent)"


def geomean(v):
    v = [x for x in v if x == x and 0 < x < float("inf")]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def fmt(v, f="%.2f"):
    return f % v if v == v and v not in (float("inf"), None) else "-"


def table(a, rows, compiled, errs):
    lines = ["load average %s; lanes %d; best of %d rounds of %d runs (median); Cuvil -O2 -t native;"
             " ONNX Runtime %s (ORT_ENABLE_ALL)" % (open("/proc/loadavg").read().split()[:3], a.lanes,
                                                   a.rounds, a.iters, ort_version())]
    for th in a.threads:
        lines += ["", "%d thread%s" % (th, "s" if th > 1 else ""), ""]
        head = ["model", "cuvil ms", "ort ms"] + (["torch ms"] if a.torch else []) + ["cuvil/ort"]
        head += (["cuvil/torch"] if a.torch else [])
        for p in a.precisions[1:]:
            head += ["%s ms" % p, "%s/ort" % p]
        head += ["compile s", "err"] + ["%s err" % p for p in a.precisions[1:]]
        lines += ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        ratios = {}
        for name in a.models:
            b = rows.get(name, {}).get(th, {})
            c, o, t = b.get(a.precisions[0], float("nan")), b.get("ort", float("nan")), b.get("torch", float("nan"))
            cells = [name, fmt(c), fmt(o)] + ([fmt(t)] if a.torch else [])
            ratios.setdefault("cuvil/ort", []).append(c / o if o == o else float("nan"))
            cells.append(fmt(ratios["cuvil/ort"][-1]))
            if a.torch:
                ratios.setdefault("cuvil/torch", []).append(c / t if t == t else float("nan"))
                cells.append(fmt(ratios["cuvil/torch"][-1]))
            for p in a.precisions[1:]:
                h = b.get(p, float("nan"))
                ratios.setdefault(p, []).append(h / o if o == o else float("nan"))
                cells += [fmt(h), fmt(ratios[p][-1])]
            cells.append(fmt(compiled.get((name, a.precisions[0]), float("nan")), "%.1f"))
            cells += [fmt(errs.get((name, p), float("nan")), "%.1e") for p in a.precisions]
            lines.append("| " + " | ".join(cells) + " |")
        g = ["geometric mean", "", ""] + ([""] if a.torch else []) + [fmt(geomean(ratios["cuvil/ort"]))]
        g += [fmt(geomean(ratios["cuvil/torch"]))] if a.torch else []
        for p in a.precisions[1:]:
            g += ["", fmt(geomean(ratios[p]))]
        lines.append("| " + " | ".join(g) + " |" + " |" * (1 + len(a.precisions)))
        lines.append("worst cuvil/ort: %s" % fmt(max([r for r in ratios["cuvil/ort"] if r == r] or [float("nan")])))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--cuvil", required=True)
    ap.add_argument("--models", default="")
    ap.add_argument("--precisions", default="fp32")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--lanes", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=14)
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--deadline", type=float, default=480)
    ap.add_argument("--json")
    a = ap.parse_args()
    a.models = [m for m in a.models.split(",") if m] or sorted(
        f[:-5] for f in os.listdir(a.dir) if f.endswith(".json"))
    a.precisions = a.precisions.split(",")
    a.threads = [int(t) for t in a.threads.split(",")]
    jobs = [(a.cuvil, a.dir, m, p) for m in a.models for p in a.precisions]
    with mp.Pool(a.jobs) as pool:
        compiled, errs = {}, {}
        for name, prec, secs, err in pool.imap_unordered(compile_one, jobs):
            compiled[(name, prec)] = secs if secs is not None else float("nan")
            if err:
                print("%s %s: compile failed: %s" % (name, prec, err), file=sys.stderr)
        print("compiled in %.0f s" % (time.time() - START), file=sys.stderr, flush=True)
        ok = [j for j in jobs if compiled[(j[2], j[3])] == compiled[(j[2], j[3])]]
        for name, prec, e, why in pool.imap_unordered(check_one, ok):
            errs[(name, prec)] = e
            if why or (prec == "fp32" and e > 1e-4):
                print("%s %s: MISMATCH %.1e %s" % (name, prec, e, why or ""), file=sys.stderr)
        print("checked in %.0f s" % (time.time() - START), file=sys.stderr, flush=True)
    by_size = sorted(a.models, key=lambda m: -os.path.getsize(os.path.join(a.dir, m + ".full.onnx")))
    lanes = [by_size[i::a.lanes] for i in range(a.lanes)]
    q = mp.Queue()
    procs = [mp.Process(target=lane, args=(({2 + 2 * i, 3 + 2 * i}, w, a, q),)) for i, w in enumerate(lanes) if w]
    for p in procs:
        p.start()
    rows, done = {}, 0
    while done < len(procs):
        item = q.get()
        if item is None:
            done += 1
        else:
            rows[item[0]] = item[1]
    for p in procs:
        p.join()
    text = table(a, rows, compiled, errs)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "compile_s": {"%s.%s" % k: v for k, v in compiled.items()},
                       "err": {"%s.%s" % k: v for k, v in errs.items()}, "table": text}, f, indent=1)


if __name__ == "__main__":
    main()
