# Error corpus: CV1004_invalid_number. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1004 5:32 Module>Token[number]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 0x4g)])
def m(x):
    return cvl.relu(x)
