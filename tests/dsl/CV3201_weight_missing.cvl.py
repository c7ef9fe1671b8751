# Error corpus: CV3201_weight_missing. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3201 8:26 FunctionDef[m]>Return>Call[cvl.conv2d]>arg[1]
# message: weight 'conv1.weights' is not in lenet.safetensors; did you mean 'conv1.weight'?
import cuvil as cvl

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="lenet.safetensors")
def m(x, p):
    return cvl.conv2d(x, p.conv1.weights, p.conv1.bias)
