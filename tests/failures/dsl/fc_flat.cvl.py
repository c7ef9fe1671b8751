# failure: CV3203 FunctionDef>Assign>BinOp[@] @ 8:9
"""Flattens 8x2x2 = 32 features into a layer made for 64."""
import cuvil as cvl

@cvl.model(input_shapes=[("N", 8, 2, 2)], weights="w.safetensors")
def fc_flat(x, p):
    x = cvl.flatten(x, 1)
    y = x @ p.fc.weight.T + p.fc.bias
    return y
