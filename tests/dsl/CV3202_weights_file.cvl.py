# Error corpus: CV3202_weights_file. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3202 5:45 FunctionDef[m]>Call[cvl.model]>kw[weights]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="lenet_v2.safetensors")
def m(x, p):
    return cvl.conv2d(x, p.conv1.weight, p.conv1.bias)
