"""Writes a QDQ (QuantizeLinear/DequantizeLinear) version of an ONNX model
from the activation scales and zero points of a `cuvil compile -p int8`
report, the way ONNX Runtime's quantizer lays one out: Q/DQ on each
quantized Conv's input, per-output-channel symmetric int8 weights behind a
DequantizeLinear.  Used by bench/models/qdq_compare.sh to run the same
int8 model in Cuvil (QDQ import) and in ONNX Runtime.

usage: qdq_export.py MODEL.onnx REPORT.txt OUT.onnx
"""
import re
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def main():
    src, report, out = sys.argv[1:4]
    params = {}
    for line in open(report):
        m = re.match(r"\s+layer (\S+)\s+int8 .*x_scale ([0-9.eE+-]+), x_zp (\d+)\)", line)
        if m:
            params[m.group(1)] = (float(m.group(2)), int(m.group(3)))
    model = onnx.load(src)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    nodes = []
    done = 0
    for n in g.node:
        if n.op_type == "Conv" and n.name in params and n.input[1] in inits:
            scale, zp = params[n.name]
            x, w = n.input[0], n.input[1]
            tag = f"{n.name}_qdq".replace("/", "_")
            g.initializer.extend([
                numpy_helper.from_array(np.array(scale, np.float32), tag + "_xs"),
                numpy_helper.from_array(np.array(zp, np.uint8), tag + "_xz")])
            nodes.append(helper.make_node("QuantizeLinear", [x, tag + "_xs", tag + "_xz"],
                                          [tag + "_xq"], name=tag + "_q"))
            nodes.append(helper.make_node("DequantizeLinear", [tag + "_xq", tag + "_xs",
                                                               tag + "_xz"],
                                          [tag + "_xd"], name=tag + "_dq"))
            wf = numpy_helper.to_array(inits[w]).astype(np.float32)
            amax = np.abs(wf.reshape(wf.shape[0], -1)).max(axis=1)
            ws = np.where(amax > 0, amax / 127, 1).astype(np.float32)
            wq = np.clip(np.rint(wf / ws.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
            g.initializer.extend([
                numpy_helper.from_array(wq, tag + "_wq"),
                numpy_helper.from_array(ws, tag + "_ws"),
                numpy_helper.from_array(np.zeros(len(ws), np.int8), tag + "_wz")])
            nodes.append(helper.make_node("DequantizeLinear", [tag + "_wq", tag + "_ws",
                                                               tag + "_wz"],
                                          [tag + "_wd"], name=tag + "_wdq", axis=0))
            n.input[0] = tag + "_xd"
            n.input[1] = tag + "_wd"
            done += 1
        nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    if not any(o.domain in ("", "ai.onnx") and o.version >= 13 for o in model.opset_import):
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = 13
    onnx.save(model, out)
    print(f"{out}: {done} convolutions in QDQ form")


if __name__ == "__main__":
    main()
