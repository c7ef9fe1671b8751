# failure: CV2102 FunctionDef>Assign>Call>Attribute @ 8:17
"""A gate with a misspelt activation, inside an unrolled loop."""
import cuvil as cvl

@cvl.model(input_shapes=[("N", 16)])
def op_sigmod(x):
    for _ in range(3):
        x = x * cvl.sigmod(x)
    return x
