# Error corpus: CV2117_model_signature. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2117 6:1 FunctionDef[m]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 1, 28, 28)], weights="lenet.safetensors")
def m(x):
    return cvl.relu(x)
