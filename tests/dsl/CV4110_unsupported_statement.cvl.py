# Error corpus: CV4110_unsupported_statement. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4110 5:1 ClassDef[Net]
import cuvil as cvl

class Net:
    pass

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return cvl.relu(x)
