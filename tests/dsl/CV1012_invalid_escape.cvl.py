# Error corpus: CV1012_invalid_escape. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1012 5:51 Module>Token[string]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)], weights="lenet\.safetensors")
def m(x, p):
    return cvl.relu(x)
