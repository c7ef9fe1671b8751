# failure: CV2104 FunctionDef>Assign>Call[cvl.conv2d]>kw @ 6:53
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def kw_paddin(x, p):
    x = cvl.conv2d(x, p.conv1.weight, p.conv1.bias, paddin=1)
    return cvl.relu(x)
