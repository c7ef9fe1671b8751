"""cuvil.load and Module: results against `cuvil run` and PyTorch, zero
copy, out=, errors, threads, the CPU check, memory over 100,000 runs."""
import json
import os
import shutil
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402
from support import np, torch  # noqa: E402

if np is None:
    raise unittest.SkipTest("numpy missing")
import cuvil  # noqa: E402


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Classifier(unittest.TestCase):
    """classifier.onnx: features f32[batch,4] -> logits f32[batch,3]."""

    @classmethod
    def setUpClass(cls):
        cls.art = support.artifact("tiny/classifier.onnx")
        cls.m = cuvil.load(cls.art)

    def x(self, n, seed=1):
        return np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)

    def test_signature_has_the_symbol(self):
        self.assertEqual(self.m.inputs, (cuvil.IO("features", "float32", ("batch", 4)),))
        self.assertEqual(self.m.outputs, (cuvil.IO("logits", "float32", ("batch", 3)),))

    def test_batches_match_cuvil_run_and_pytorch(self):
        ref = support.torch_classifier() if torch is not None else None
        for n in (1, 3, 8, 64):
            x = self.x(n, seed=n)
            y = self.m(x)
            self.assertEqual(y.shape, (n, 3))
            np.testing.assert_array_equal(y, support.cuvil_run(self.art, {"features": x})["logits"])
            if ref is not None:
                with torch.no_grad():
                    want = ref(torch.from_numpy(x)).numpy()
                np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)

    def test_torch_tensors_in_place_through_dlpack(self):
        if torch is None:
            self.skipTest("torch missing")
        for n in (2, 5):
            x = self.x(n)
            t = torch.from_numpy(x.copy())
            y = self.m(t)
            self.assertEqual(self.m._input_addresses()[0], t.data_ptr())
            np.testing.assert_array_equal(y, self.m(x))

    def test_outputs_export_dlpack_to_torch(self):
        if torch is None:
            self.skipTest("torch missing")
        y = self.m(self.x(4))
        t = torch.from_dlpack(y)
        self.assertEqual(t.data_ptr(), y.ctypes.data)
        np.testing.assert_array_equal(t.numpy(), y)

    def test_contiguous_input_is_read_in_place(self):
        x = self.x(6)
        self.m(x)
        self.assertEqual(self.m._input_addresses()[0], x.ctypes.data)

    def test_other_float_or_strided_input_is_converted_once(self):
        x = self.x(6)
        want = self.m(x)
        x64 = x.astype(np.float64)
        np.testing.assert_array_equal(self.m(x64), self.m(x64.astype(np.float32)))
        self.assertNotEqual(self.m._input_addresses()[0], x64.ctypes.data)
        wide = np.zeros((6, 8), np.float32)
        wide[:, ::2] = x
        strided = wide[:, ::2]
        np.testing.assert_array_equal(self.m(strided), want)
        self.assertNotEqual(self.m._input_addresses()[0], strided.ctypes.data)
        np.testing.assert_array_equal(self.m(x.tolist()), want)

    def test_named_dict_and_out(self):
        x = self.x(3)
        want = self.m(x)
        np.testing.assert_array_equal(self.m(features=x), want)
        d = self.m.run({"features": x})
        self.assertEqual(list(d), ["logits"])
        np.testing.assert_array_equal(d["logits"], want)
        buf = np.full((3, 3), -1, np.float32)
        self.assertIs(self.m(x, out=buf), buf)
        np.testing.assert_array_equal(buf, want)
        buf2 = np.zeros((3, 3), np.float32)
        self.assertIs(self.m.run([x], out={"logits": buf2})["logits"], buf2)
        np.testing.assert_array_equal(buf2, want)

    def test_wrong_dtype_shape_name_errors(self):
        with self.assertRaises(cuvil.InputError) as c:
            self.m(np.ones((2, 4), np.int64))
        self.assertEqual((c.exception.code, c.exception.input), ("CV2024", "features"))
        with self.assertRaises(cuvil.InputError) as c:
            self.m(np.ones((2, 5), np.float32))
        e = c.exception
        self.assertEqual((e.code, e.input, e.expected, e.given),
                         ("CV2024", "features", "f32[batch,4]", "f32[2,5]"))
        self.assertIn("features", str(e))
        with self.assertRaises(cuvil.InputError) as c:
            self.m(np.ones((4,), np.float32))
        self.assertEqual(c.exception.given, "f32[4]")
        with self.assertRaises(cuvil.InputError) as c:
            self.m(feature=self.x(2))
        self.assertEqual(c.exception.input, "feature")
        with self.assertRaises(cuvil.InputError):
            self.m(self.x(2), self.x(2))
        with self.assertRaises(cuvil.InputError) as c:
            self.m(self.x(2), out=np.zeros((3, 3), np.float32))
        self.assertEqual(c.exception.input, "logits")
        with self.assertRaises(cuvil.InputError):
            self.m(self.x(2), out=np.zeros((2, 3), np.float64))
        big = np.zeros(12, np.float32)
        with self.assertRaises(cuvil.InputError) as c:  # out= over the input's memory
            self.m(big[:8].reshape(2, 4), out=big[6:].reshape(2, 3))
        self.assertIn("shares memory with input 'features'", str(c.exception))

    def test_threads_each_running_a_model(self):
        xs = [self.x(n, seed=n) for n in range(1, 9)]
        want = [self.m(x) for x in xs]
        errors = []

        def work(k, m):
            try:
                for i in range(200):
                    j = (i + k) % len(xs)
                    np.testing.assert_array_equal(m(xs[j]), want[j])
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        own = [threading.Thread(target=work, args=(k, cuvil.load(self.art))) for k in range(4)]
        shared = [threading.Thread(target=work, args=(k, self.m)) for k in range(4)]
        for t in own + shared:
            t.start()
        for t in own + shared:
            t.join()
        self.assertEqual(errors, [])

    def test_100000_runs_do_not_grow_memory(self):
        x = self.x(2)
        buf = np.empty((2, 3), np.float32)
        for _ in range(5000):
            self.m(x)
        before = rss_kb()
        for i in range(100000):
            if i % 4 == 0:
                self.m(x)
            elif i % 4 == 1:
                self.m(features=x, out=buf)
            elif i % 4 == 2:
                self.m.run({"features": x})
            else:
                try:
                    self.m(x[:, :3])
                except cuvil.InputError:
                    pass
        grown = rss_kb() - before
        self.assertLess(grown, 2048, "RSS grew %d KiB over 100,000 runs" % grown)


class TwoOutputs(unittest.TestCase):
    def test_encoder_returns_a_tuple_and_run_a_dict(self):
        art = support.artifact("tiny/encoder.onnx")
        m = cuvil.load(art)
        self.assertEqual(len(m.outputs), 2)
        x = np.random.default_rng(2).standard_normal((1, 1, 8, 8)).astype(np.float32)
        y = m(x)
        self.assertIsInstance(y, tuple)
        ref = support.cuvil_run(art, {m.inputs[0].name: x})
        d = m.run([x])
        self.assertEqual(list(d), [o.name for o in m.outputs])
        for o, a in zip(m.outputs, y):
            np.testing.assert_array_equal(a, d[o.name])
            np.testing.assert_array_equal(a, ref[o.name])


class ResNet18(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.art = support.artifact("resnet18.onnx")
        cls.x = np.load(support.model("resnet18.input.npy"))
        cls.ref = np.load(support.model("resnet18.output.npy"))

    def test_numpy_and_torch_match_pytorch_and_cuvil_run(self):
        m = cuvil.load(self.art, threads=2)
        y = m(self.x)
        np.testing.assert_allclose(y, self.ref, rtol=1e-3, atol=1e-3)
        np.testing.assert_array_equal(y, support.cuvil_run(self.art, {"input": self.x})["output"])
        batch = np.concatenate([self.x, self.x[:, :, ::-1].copy()])
        yb = m(batch)
        self.assertEqual(yb.shape, (2, 1000))
        np.testing.assert_allclose(yb[0], self.ref[0], rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(yb[1], m(batch[1:])[0], rtol=1e-4, atol=1e-4)
        if torch is not None:
            t = torch.from_numpy(batch)
            np.testing.assert_array_equal(m(t), yb)
            self.assertEqual(m._input_addresses()[0], t.data_ptr())

    def test_gil_is_released_while_the_model_runs(self):
        m = cuvil.load(self.art)
        x = np.repeat(self.x, 4, axis=0)
        started, state = threading.Event(), {"done": False}

        def work():
            started.set()
            m(x)
            state["done"] = True

        old = sys.getswitchinterval()
        # A thread that kept the GIL through the run would run on to "done"
        # before this thread got it back (the interval is longer than a run).
        sys.setswitchinterval(5.0)
        try:
            t = threading.Thread(target=work)
            t.start()
            started.wait()
            threading.Event().wait(0.02)
            during = state["done"]
            t.join()
        finally:
            sys.setswitchinterval(old)
        self.assertFalse(during, "this thread did not run while the model ran")
        self.assertTrue(state["done"])


class CpuCheck(unittest.TestCase):
    def test_missing_cpu_feature_is_coded(self):
        with open("/proc/cpuinfo") as f:
            flags = f.read()
        lacking = [f for f, flag in (("amx-tile", "amx_tile"), ("avx512fp16", "avx512_fp16"),
                                     ("amx-int8", "amx_int8"), ("avx512vbmi", "avx512vbmi"))
                   if " %s" % flag not in flags]
        if not lacking:
            self.skipTest("this CPU has every feature the test could ask for")
        src = support.artifact("tiny/classifier.onnx")
        art = os.path.join(support.tmpdir(), "cpu-check")
        shutil.copytree(src, art)
        for name in ("manifest.json", "classifier.manifest.json"):
            p = os.path.join(art, name)
            with open(p) as f:
                doc = json.load(f)
            doc["target"]["requires"].append(lacking[0])
            with open(p, "w") as f:
                json.dump(doc, f)
        with self.assertRaises(cuvil.Error) as c:
            cuvil.load(art)
        self.assertEqual(c.exception.code, "CV5036")
        self.assertIn(lacking[0], str(c.exception))
        cuvil.load(src)  # the original still loads


if __name__ == "__main__":
    unittest.main()
