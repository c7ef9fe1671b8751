# Error corpus: CV2102_unknown_op. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2102 8:12 FunctionDef[m]>Return>Call[cvl.conv3d]>Attribute[conv3d]
# message: did you mean 'cvl.conv2d'?
import cuvil as cvl

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="lenet.safetensors")
def m(x, p):
    return cvl.conv3d(x, p.conv1.weight)
