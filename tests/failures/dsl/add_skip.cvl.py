# failure: CV3002 FunctionDef>Assign>BinOp[+] @ 7:9
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 16, 16)], weights="w.safetensors")
def add_skip(x, p):
    y = cvl.relu(cvl.conv2d(x, p.conv1.weight, p.conv1.bias, padding=1))
    y = y + x
    return y
