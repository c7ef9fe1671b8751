# Error corpus: CV4114_unsupported_builtin. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4114 7:14 FunctionDef[m]>Assign>Call[sorted]>Name[sorted]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    widths = sorted((4, 2))
    return cvl.relu(x)
