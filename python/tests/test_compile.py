"""cuvil.compile and cuvil.validate: a model compiled and loaded from
Python, a compile error's diagnostics as objects."""
import os
import sys
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

    def test_unknown_target_is_a_compile_error(self):
        with self.assertRaises(cuvil.CompileError) as c:
            cuvil.compile(support.model("tiny/classifier.onnx"), target="pdp11")
        self.assertEqual(c.exception.code, "CV5010")
        self.assertIn("pdp11", c.exception.message)


if __name__ == "__main__":
    unittest.main()
