# Error corpus: CV4115_unsupported_parameter. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4115 5:14 FunctionDef[chain]>param[acts]
import cuvil as cvl

def chain(x, *acts):
    return x

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return chain(x, cvl.relu)
