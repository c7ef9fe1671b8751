# failure: CV3201 FunctionDef>Assign>Call[cvl.conv2d]>arg[1] @ 6:23
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def weight_typo(x, p):
    y = cvl.conv2d(x, p.conv1.weights, p.conv1.bias)
    return cvl.relu(y)
