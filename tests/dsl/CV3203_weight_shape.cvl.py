# Error corpus: CV3203_weight_shape. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3203 10:12 FunctionDef[m]>Return>BinOp[@]
# message: weight 'fc.0.weight' in lenet.safetensors: f32[400,120]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="lenet.safetensors")
def m(x, p):
    x = cvl.relu(cvl.conv2d(x, p.conv1.weight, p.conv1.bias, padding=2))
    x = cvl.flatten(x, 1)
    return x @ p.fc[0].weight.T
