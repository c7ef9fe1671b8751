# failure: CV2104 FunctionDef>Assign>Call[cvl.conv2d]>kw @ 6:52
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def kw_strid(img, w):
    out = cvl.relu(cvl.conv2d(img, w.conv1.weight, strid=2))
    return out
