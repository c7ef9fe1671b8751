# failure: CV3203 FunctionDef>Assign>BinOp[@] @ 6:14
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64)], weights="w.safetensors")
def fc_head(x, p):
    scores = x @ p.head.weight.T
    return cvl.softmax(scores, axis=-1)
