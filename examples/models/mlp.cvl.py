"""A small multi-layer perceptron: helpers with keyword and default
arguments, module constants, enumerate, and a constant if."""
import cuvil as cvl

IN_FEATURES = 64
HIDDEN = (128, 64)
CLASSES = 10


def linear(x, layer):
    return x @ layer.weight.T + layer.bias


def dense(x, layer, act="relu"):
    y = linear(x, layer)
    if act == "relu":
        return cvl.relu(y)
    return cvl.gelu(y)


@cvl.model(input_shapes=[("N", IN_FEATURES)], weights="mlp.safetensors")
def mlp(x, p):
    for i, width in enumerate(HIDDEN):
        assert p.layers[i].bias.shape == (width,), "hidden width mismatch"
        x = dense(x, p.layers[i], act="relu" if i == 0 else "gelu")
    logits = linear(x, p.head)
    return cvl.softmax(logits, axis=-1), logits
