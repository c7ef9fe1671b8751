# failure: CV3203 FunctionDef>Assign>Call[cvl.conv2d] @ 7:9
"""A stem that skips its first convolution: conv2 expects conv1's 8 channels."""
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def conv_skip(x, p):
    x = cvl.conv2d(x, p.conv2.weight, p.conv2.bias, padding=1)
    return cvl.relu(x)
