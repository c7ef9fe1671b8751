# failure: CV3203 FunctionDef>Assign>Call[cvl.conv2d] @ 10:22
"""Two stages in a loop; the first stage already uses the second's weights."""
import cuvil as cvl

STAGES = ("conv2", "conv2")

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def conv_loop(x, p):
    for name in STAGES:
        y = cvl.relu(cvl.conv2d(x, p[name + ".weight"], p[name + ".bias"], padding=1))
        x = y
    return x
