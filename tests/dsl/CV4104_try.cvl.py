# Error corpus: CV4104_try. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4104 7:5 FunctionDef[m]>Try
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    try:
        y = cvl.gelu(x)
    except Exception:
        y = cvl.relu(x)
    return y
