# failure: CV3203 FunctionDef>Assign>Call[cvl.conv2d] @ 7:36
"""The same slip, buried in a pooling block."""
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def conv_nested(image, params):
    feat = cvl.max_pool2d(cvl.relu(cvl.conv2d(image, params.conv2.weight, params.conv2.bias, padding=1)), 2)
    return cvl.flatten(feat, 1)
