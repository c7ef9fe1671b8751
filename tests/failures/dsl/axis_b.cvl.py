# failure: CV3006 FunctionDef>Return>Call[cvl.softmax] @ 7:12
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def axis_b(x, p):
    y = cvl.flatten(cvl.conv2d(x, p.conv1.weight, p.conv1.bias, padding=1), 1)
    return cvl.softmax(y, axis=-3)
