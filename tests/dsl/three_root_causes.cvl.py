# Error corpus: three_root_causes. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2104 11:47 FunctionDef[block]>Assign>Call[cvl.conv2d]>kw[paddin]
# expect: CV2102 19:9 FunctionDef[lenet]>Assign>Call[cvl.flaten]>Attribute[flaten]
# expect: CV3201 22:18 FunctionDef[lenet]>Assign>BinOp[+]>BinOp[@]>Attribute[T]>Attribute[weight]
# roots: 3
"""Three independent mistakes, each followed by uses of its result: the
front end reports exactly three root causes."""
import cuvil as cvl

def block(x, conv):
    y = cvl.conv2d(x, conv.weight, conv.bias, paddin=2)
    y = cvl.relu(y)
    return cvl.max_pool2d(y, 2)

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="lenet.safetensors")
def lenet(x, p):
    x = block(x, p.conv1)
    x = block(x, p.conv2)
    x = cvl.flaten(x, 1)
    for i in range(2):
        x = cvl.relu(x @ p.fc[i].weight.T + p.fc[i].bias)
    logits = x @ p.outt.weight.T + p.out.bias
    return cvl.softmax(logits, axis=-1)
