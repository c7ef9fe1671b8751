# failure: CV2101 FunctionDef>Return>Call[cvl.softmax]>arg[0] @ 7:24
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64)], weights="w.safetensors")
def name_logit(x, p):
    logits = x @ p.fc.weight.T + p.fc.bias
    return cvl.softmax(logit, axis=-1)
