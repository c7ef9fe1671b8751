# Error corpus: CV2009_op_dtype_mismatch. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2009 8:12 FunctionDef[m]>Return>BinOp[+]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    ids = cvl.cast(x, to="int32")
    return x + ids
