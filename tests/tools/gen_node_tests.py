#!/usr/bin/python3
"""Writes the ONNX project's backend node tests of a few operator modules,
in the layout `onnx-backend-test generate-data` uses (test_X/model.onnx,
test_X/test_data_set_0/{input,output}_N.pb), in about a second instead of
the six the whole set takes:

    /usr/bin/python3 tests/tools/gen_node_tests.py OUT_DIR MODULE...

MODULE names a file of onnx/backend/test/case/node/ (relu, conv, gemm, ...);
importing it runs the exports of its test classes (onnx seeds numpy before
each, so the data is the same as the whole set's).  Used by the cross-target tests
(tests/unit/compiler-core/backend/test_backend_cross_onnx.c).  Generated data, never committed.
"""
import importlib
import os
import sys

import numpy as np

# numpy 1.24 removed the aliases onnx 1.12's generators still use.
for alias, typ in (("float", float), ("int", int), ("bool", bool), ("object", object),
                   ("complex", complex), ("str", str)):
    setattr(np, alias, typ)

import onnx.backend.test.case.node as node_tests  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def write_case(out, case):
    d = os.path.join(out, case.name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, "test_data_set_%d" % i)
        os.makedirs(ds, exist_ok=True)
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for j, v in enumerate(values):
                with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(v), infos[j].name)
                            .SerializeToString())


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    node_tests._TargetOpType = None
    for name in sys.argv[2:]:
        importlib.import_module("onnx.backend.test.case.node." + name)
    n = 0
    for case in node_tests._NodeTestCases:
        if all(i.type.HasField("tensor_type") for i in case.model.graph.input):
            write_case(out, case)
            n += 1
    print("gen_node_tests: %d tests in %s" % (n, out))


if __name__ == "__main__":
    main()
