# Error corpus: CV2110_missing_argument. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2110 10:12 FunctionDef[m]>Return>Call[linear]
import cuvil as cvl

def linear(x, layer, act):
    return act(x @ layer.weight.T + layer.bias)

@cvl.model(input_shapes=[("N", 84)], weights="lenet.safetensors")
def m(x, p):
    return linear(x, p.out)
