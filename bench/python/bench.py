"""bench/python: per-call time of cuvil.Module (Python, numpy in, a new numpy
array out) against cv_<name>_run called from C (c_run) on the same artifact,
interleaved round by round; the median of ROUNDS rounds each, the
difference (the Python API's overhead) and the ratio.
Usage: bench.py CUVIL_BIN C_RUN WORKDIR MODEL... (MODEL: path:batch:iters)"""
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import cuvil

ROUNDS = int(os.environ.get("ROUNDS", "7"))


def py_ns(m, x, iters, out=None):
    m(x)
    t0 = time.perf_counter_ns()
    if out is None:
        for _ in range(iters):
            m(x)
    else:
        for _ in range(iters):
            m(x, out=out)
    return (time.perf_counter_ns() - t0) / iters


def main():
    cuvil_bin, c_run, work = sys.argv[1:4]
    print("%-28s %12s %12s %12s %12s %8s" % ("model (batch)", "C run", "Python m(x)",
                                              "m(x, out=)", "overhead", "ratio"))
    for spec in sys.argv[4:]:
        path, batch, iters = spec.rsplit(":", 2)
        batch, iters = int(batch), int(iters)
        name = os.path.splitext(os.path.basename(path))[0]
        out = os.path.join(work, name)
        subprocess.run([cuvil_bin, "compile", path, "-o", out, "-q"], check=True)
        m = cuvil.load(out)
        shape = tuple(batch if isinstance(d, str) else d for d in m.inputs[0].shape)
        oshape = tuple(batch if isinstance(d, str) else d for d in m.outputs[0].shape)
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        buf = np.empty(oshape, np.float32)
        lib = os.path.join(out, "lib%s.so" % name)
        c, p, po = [], [], []
        for _ in range(ROUNDS):
            r = subprocess.run([c_run, lib, name, str(x.size), str(buf.size), str(batch), str(iters)],
                               check=True, capture_output=True, text=True)
            c.append(float(r.stdout))
            p.append(py_ns(m, x, iters))
            po.append(py_ns(m, x, iters, buf))
        c, p, po = statistics.median(c), statistics.median(p), statistics.median(po)
        unit = lambda ns: "%.2f us" % (ns / 1e3) if ns < 1e6 else "%.2f ms" % (ns / 1e6)  # noqa: E731
        print("%-28s %12s %12s %12s %12s %7.3fx" % ("%s (%d)" % (name, batch), unit(c), unit(p),
                                                    unit(po), unit(p - c), p / c))


if __name__ == "__main__":
    main()
