# Error corpus: CV2115_unpack_mismatch. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2115 9:5 FunctionDef[m]>Assign>Tuple
import cuvil as cvl

SIZES = (2, 2, 4)

@cvl.model(input_shapes=[("N", 8)])
def m(x):
    a, b = cvl.split(x, axis=1, sizes=SIZES)
    return a
