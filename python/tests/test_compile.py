"""cuvil.compile and cuvil.validate: a model compiled in this process and
loaded, the cache shared between compiles, a compile error's diagnostics as
objects, the GIL released while a model compiles."""
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402
from support import np  # noqa: E402

if np is None:
    raise unittest.SkipTest("numpy missing")
import cuvil  # noqa: E402

BAD = """cuir 1
model @bad(%x: f32[2,4]) -> (f32[2,4]) {
  %0 = add(%x, %nope) : f32[2,4]
  return %0
}
"""


class Compile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.cuvil_bin()
        cls.env = {k: os.environ.get(k) for k in ("CUVIL_CACHE_DIR", "CUVIL_BIN")}
        os.environ["CUVIL_CACHE_DIR"] = os.path.join(support.tmpdir(), "cache")

    @classmethod
    def tearDownClass(cls):
        for k, v in cls.env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)

    def test_compile_returns_a_loaded_module(self):
        src = support.model("tiny/classifier.onnx")
        out = os.path.join(support.tmpdir(), "compiled")
        m = cuvil.compile(src, out=out)
        self.assertTrue(os.path.exists(os.path.join(out, "manifest.json")))
        x = np.ones((2, 4), np.float32)
        np.testing.assert_array_equal(m(x), cuvil.load(support.artifact("tiny/classifier.onnx"))(x))
        m2 = cuvil.compile(src, cache=False)  # a temporary directory, gone after loading
        np.testing.assert_array_equal(m2(x), m(x))
        self.assertFalse(os.path.exists(m2.path))

    def test_compile_runs_in_this_process_through_the_cache(self):
        # No cuvil program to run: the compiler is this process's own.
        old, os.environ["CUVIL_BIN"] = support.cuvil_bin(), "/nonexistent/cuvil"
        try:
            src = support.model("tiny/classifier.onnx")
            a = cuvil.compile(src, out=os.path.join(support.tmpdir(), "inproc-a"), name="inproc")
            b = cuvil.compile(src, out=os.path.join(support.tmpdir(), "inproc-b"), name="inproc")
        finally:
            os.environ["CUVIL_BIN"] = old
        self.assertTrue(a.compiled, a.cache_line)
        self.assertFalse(b.compiled, b.cache_line)
        self.assertIn("l2 hit", b.cache_line)
        for f in ("libinproc.so", "inproc.h", "manifest.json"):
            with open(os.path.join(a.path, f), "rb") as fa, open(os.path.join(b.path, f), "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), f)
        x = np.ones((2, 4), np.float32)
        np.testing.assert_array_equal(a(x), b(x))

    def test_gil_is_released_while_a_model_compiles(self):
        src = support.model("tiny/classifier.onnx")
        ticks, done = [0], threading.Event()

        def count():
            while not done.is_set():
                ticks[0] += 1
                threading.Event().wait(0.001)

        t = threading.Thread(target=count)
        t.start()
        try:
            before = ticks[0]
            cuvil.compile(src, cache=False, opt_level=0)
            during = ticks[0] - before
        finally:
            done.set()
            t.join()
        self.assertGreater(during, 5, "the counting thread did not run during the compile")

    def test_compile_error_carries_diagnostics(self):
        path = os.path.join(support.tmpdir(), "bad.cuir")
        with open(path, "w") as f:
            f.write(BAD)
        with self.assertRaises(cuvil.CompileError) as c:
            cuvil.compile(path, out=os.path.join(support.tmpdir(), "bad-out"))
        e = c.exception
        self.assertTrue(e.diagnostics)
        d = e.diagnostics[0]
        self.assertIsInstance(d, cuvil.Diagnostic)
        self.assertRegex(d.code, r"^CV\d{4}$")
        self.assertEqual((d.severity, d.file, d.line), ("error", path, 3))
        self.assertEqual((d.code, d.column), ("CV2001", 16))
        self.assertIn("nope", d.message)
        self.assertEqual(e.code, d.code)
        v = cuvil.validate(path)
        self.assertEqual([(x.code, x.file, x.line, x.column) for x in v if x.severity == "error"],
                         [(x.code, x.file, x.line, x.column) for x in e.diagnostics
                          if x.severity == "error"])
        self.assertEqual(cuvil.validate(support.model("tiny/classifier.onnx")), [])

    def test_validate_checks_specs_too(self):
        path = os.path.join(support.tmpdir(), "cluster.yaml")
        with open(path, "w") as f:
            f.write("apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\nmetadata: {name: c}\n"
                    "spec: {queue: {kind: carrier-pigeon}}\n")
        diags = [d for d in cuvil.validate(path) if d.severity == "error"]
        self.assertTrue(diags)
        self.assertTrue(all(d.code.startswith("CV6") and d.file == path for d in diags), diags)

    def test_unknown_target_is_a_compile_error(self):
        with self.assertRaises(cuvil.CompileError) as c:
            cuvil.compile(support.model("tiny/classifier.onnx"), target="pdp11")
        self.assertEqual(c.exception.code, "CV5010")
        self.assertIn("pdp11", c.exception.message)
        with self.assertRaises(cuvil.CompileError) as c:
            cuvil.compile(support.model("tiny/classifier.onnx"), precision="fp64")
        self.assertEqual(c.exception.code, "CV4401")


if __name__ == "__main__":
    unittest.main()
