# Error corpus: CV2116_constant_error. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2116 10:5 FunctionDef[m]>Assert
import cuvil as cvl

CHANNELS = 6
GROUPS = 4

@cvl.model(input_shapes=[("N", CHANNELS)])
def m(x):
    assert CHANNELS % GROUPS == 0, "channels must divide into groups"
    return cvl.relu(x)
