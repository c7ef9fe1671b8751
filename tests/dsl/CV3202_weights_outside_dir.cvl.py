# Error corpus: CV3202_weights_outside_dir. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3202 6:45 FunctionDef[m]>Call[cvl.model]>kw[weights]
# message: which is outside
import cuvil as cvl

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="../../etc/lenet.safetensors")
def m(x, p):
    return cvl.conv2d(x, p.conv1.weight, p.conv1.bias)
