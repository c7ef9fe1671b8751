#!/usr/bin/python3
"""Exports ONNX RNN / LSTM / GRU models over a dynamic number of steps T
with reference outputs, for tests/unit/compiler-core/test_rnn_models.c (issue 26).

usage: export_rnn.py OUTDIR

For each model NAME: OUTDIR/NAME.onnx and, per shape k,
OUTDIR/NAME.<k>.in<i>.npy and OUTDIR/NAME.<k>.out<i>.npy.
- rnn_relu, rnn_tanh: torch's nn.RNN exported (ONNX RNN, Relu / Tanh),
  bidirectional and forward; references from torch.
- lstm_lens, gru_lens, rnn_lens: hand-built ONNX nodes (bidirectional) with a
  sequence_lens input; references from torch's packed sequences (outputs
  zero past each length, final states at each row's last step, the
  backward direction over each row's own steps), which is ONNX's meaning.
- lstm_peep: a hand-built LSTM with peepholes P; reference from onnx's own
  LSTM_Helper (onnx.backend.test.case.node.lstm).
- rnn_sigmoid: a Sigmoid plain RNN over a dynamic T, which Cuvil refuses."""
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)
I, H = 5, 4


def save(out, name, k, ins, outs):
    for i, a in enumerate(ins):
        np.save("%s/%s.%d.in%d.npy" % (out, name, k, i), a)
    for i, a in enumerate(outs):
        np.save("%s/%s.%d.out%d.npy" % (out, name, k, i), np.ascontiguousarray(a, np.float32))


def export_torch_rnn(out, name, nonlin, bidi):
    m = nn.RNN(I, H, nonlinearity=nonlin, bidirectional=bidi).eval()
    x = torch.randn(6, 2, I)
    torch.onnx.export(m, (x,), "%s/%s.onnx" % (out, name), input_names=["x"],
                      output_names=["y", "h"], dynamic_axes={"x": {0: "T", 1: "B"}},
                      opset_version=14)
    for k, (t, b) in enumerate([(6, 2), (1, 1), (11, 3)]):
        x = torch.randn(t, b, I)
        with torch.no_grad():
            y, h = m(x)
        save(out, name, k, [x.numpy()], [y.numpy(), h.numpy()])


# torch's gate blocks -> ONNX's: LSTM i f g o -> i o f c; GRU r z n -> z r n.
ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN": [0]}


def onnx_weights(m, kind, dirs):
    def blocks(a):
        g = len(ORDER[kind])
        parts = np.split(a, g, axis=0)
        return np.concatenate([parts[j] for j in ORDER[kind]], axis=0)
    w, r, b = [], [], []
    for d in range(dirs):
        sfx = "_l0" + ("_reverse" if d else "")
        w.append(blocks(getattr(m, "weight_ih" + sfx).detach().numpy()))
        r.append(blocks(getattr(m, "weight_hh" + sfx).detach().numpy()))
        b.append(np.concatenate([blocks(getattr(m, "bias_ih" + sfx).detach().numpy()),
                                 blocks(getattr(m, "bias_hh" + sfx).detach().numpy())]))
    return np.stack(w), np.stack(r), np.stack(b)


def export_lens(out, name, kind):
    cls = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN": nn.RNN}[kind]
    kw = {"nonlinearity": "relu"} if kind == "RNN" else {}
    m = cls(I, H, bidirectional=True, **kw).eval()
    w, r, b = onnx_weights(m, kind, 2)
    attrs = {"hidden_size": H, "direction": "bidirectional"}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    if kind == "RNN":
        attrs["activations"] = ["Relu", "Relu"]
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, ["X", "W", "R", "B", "lens"], outs, **attrs)
    f = TensorProto.FLOAT
    g = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("X", f, ["T", "N", I]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, ["N"])],
        [helper.make_tensor_value_info("Y", f, ["T", 2, "N", H]),
         helper.make_tensor_value_info("Y_h", f, [2, "N", H])] +
        ([helper.make_tensor_value_info("Y_c", f, [2, "N", H])] if kind == "LSTM" else []),
        [numpy_helper.from_array(a, n) for a, n in ((w, "W"), (r, "R"), (b, "B"))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]),
              "%s/%s.onnx" % (out, name))
    for k, lens in enumerate([[5, 2, 1], [3], [7, 7, 4, 1]]):
        t, n = max(lens), len(lens)
        t += k == 0     # a step past every row's length
        x = torch.randn(t, n, I)
        with torch.no_grad():
            packed = pack_padded_sequence(x, torch.tensor(lens), enforce_sorted=False)
            y, st = m(packed)
            y, _ = pad_packed_sequence(y, total_length=t)
        st = st if kind == "LSTM" else (st,)
        y = y.numpy().reshape(t, n, 2, H).transpose(0, 2, 1, 3)
        save(out, name, k, [x.numpy(), np.array(lens, np.int32)],
             [y] + [s.numpy() for s in st])


def export_peep(out, name):
    from onnx.backend.test.case.node.lstm import LSTM_Helper
    rng = np.random.default_rng(1)
    w = rng.uniform(-0.5, 0.5, (1, 4 * H, I)).astype(np.float32)
    r = rng.uniform(-0.5, 0.5, (1, 4 * H, H)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, (1, 8 * H)).astype(np.float32)
    p = rng.uniform(-0.5, 0.5, (1, 3 * H)).astype(np.float32)
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "h0", "c0", "P"], ["Y", "Y_h"],
                            hidden_size=H)
    f = TensorProto.FLOAT
    g = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("X", f, ["T", "N", I]),
         helper.make_tensor_value_info("h0", f, [1, "N", H]),
         helper.make_tensor_value_info("c0", f, [1, "N", H])],
        [helper.make_tensor_value_info("Y", f, ["T", 1, "N", H]),
         helper.make_tensor_value_info("Y_h", f, [1, "N", H])],
        [numpy_helper.from_array(a, n) for a, n in ((w, "W"), (r, "R"), (b, "B"), (p, "P"))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]),
              "%s/%s.onnx" % (out, name))
    for k, (t, n) in enumerate([(4, 2), (1, 1), (9, 3)]):
        x = rng.uniform(-1, 1, (t, n, I)).astype(np.float32)
        h0 = rng.uniform(-1, 1, (1, n, H)).astype(np.float32)
        c0 = rng.uniform(-1, 1, (1, n, H)).astype(np.float32)
        y, yh = LSTM_Helper(X=x, W=w, R=r, B=b, P=p, initial_h=h0, initial_c=c0).step()
        save(out, name, k, [x, h0, c0], [y, yh])


def export_refused(out, name):
    """A Sigmoid plain RNN over a dynamic T: what the rnn op does not take."""
    node = helper.make_node("RNN", ["X", "W", "R"], ["Y"], hidden_size=H,
                            activations=["Sigmoid"], name="sigmoid_rnn")
    f = TensorProto.FLOAT
    g = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("X", f, ["T", 2, I])],
        [helper.make_tensor_value_info("Y", f, ["T", 1, 2, H])],
        [numpy_helper.from_array(np.zeros((1, H, I), np.float32), "W"),
         numpy_helper.from_array(np.zeros((1, H, H), np.float32), "R")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]),
              "%s/%s.onnx" % (out, name))


def main():
    out = sys.argv[1]
    export_torch_rnn(out, "rnn_relu", "relu", True)
    export_torch_rnn(out, "rnn_tanh", "tanh", False)
    export_lens(out, "lstm_lens", "LSTM")
    export_lens(out, "gru_lens", "GRU")
    export_lens(out, "rnn_lens", "RNN")
    export_peep(out, "lstm_peep")
    export_refused(out, "rnn_sigmoid")


if __name__ == "__main__":
    main()
