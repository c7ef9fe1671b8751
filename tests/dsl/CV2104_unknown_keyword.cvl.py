# Error corpus: CV2104_unknown_keyword. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2104 8:56 FunctionDef[m]>Return>Call[cvl.conv2d]>kw[paddng]
# message: did you mean 'padding'?
import cuvil as cvl

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="lenet.safetensors")
def m(x, p):
    return cvl.conv2d(x, p.conv1.weight, p.conv1.bias, paddng=2)
