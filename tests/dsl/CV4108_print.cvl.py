# Error corpus: CV4108_print. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4108 7:5 FunctionDef[m]>Expr>Call[print]>Name[print]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    print(x.shape)
    return cvl.relu(x)
