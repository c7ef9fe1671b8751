# failure: CV3201 FunctionDef>Assign>Call[cvl.conv2d]>arg[1] @ 6:23
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def weight_conv3(x, p):
    x = cvl.conv2d(x, p.conv3.weight, None, padding=1)
    return x
